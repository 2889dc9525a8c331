"""The bare Streamlit page `bench/page_renders.py` measures the dashboard against: a title, a line of
text, and a slider (0 to 3 by 0.01, as the Pareto page's lambda_in) whose value a metric card shows, so
that a step is timed the way a Pareto step is (the card shows a new value and the script is done).
Nothing of FORGE is imported: what a page costs here is Streamlit's own work."""

import streamlit as st

st.title("Bare page")
st.write("A line of text.")
value = st.slider("value", 0.0, 3.0, 0.1, step=0.01)
st.metric("Slider value", f"{value:.2f}")
