"""Pareto: quality against token cost under swept cost weights (coming with the training issue)."""

import streamlit as st

st.title("Pareto")
st.info("Coming with the training issue: sweep lambda_in and lambda_out and compare the routers' "
        "Pareto frontier with the fixed arms and baselines. The Overview page already shows the fixed "
        "arms and the oracle.", icon=":material/construction:")
