"""Licence notices of the opt-in models, said once wherever such a model is installed, fetched or refused."""

GEMMA_TERMS = (
    "Gemma weights (Gemma 3, EmbeddingGemma) are under the Gemma Terms of Use (https://ai.google.dev/gemma/terms), "
    "which are not an OSI licence and restrict use; opt-in only, never a default"
)
