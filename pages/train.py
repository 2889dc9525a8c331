"""Train: Stage 1 distillation and Stage 2 GRPO runs (coming with the training issue)."""

import streamlit as st

st.title("Train")
st.info("Coming with the training issue: start Stage 1 (KL distillation) and Stage 2 (GRPO) runs and "
        "follow their curves here. Meanwhile: `forge train --stage 1`.", icon=":material/construction:")
