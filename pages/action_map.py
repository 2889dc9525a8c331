"""Action map: where a router sends queries in embedding space (coming with the training issue)."""

import streamlit as st

st.title("Action map")
st.info("Coming with the training issue: a UMAP of the query embeddings coloured by the router's chosen "
        "arm and by the oracle's, with their agreement.", icon=":material/construction:")
