"""The default NLI models, in a module that imports nothing (the command line's --help reads them)."""

# The English default: the one shipped NLI model that meets the model-zoo issue's visible targets (SNLI 0.856,
# SICK 0.889, Breaking-NLI 0.969) and the best MENLI metric on English references (README "Defaults by
# measurement"). 7.0x nli-minilm's time on CPU; `packaged:nli-minilm` stays for speed, `packaged:nli-me5` for
# non-English text. Published rows measured with nli-minilm pass it explicitly (PUBLISHED_NLI).
DEFAULT_NLI = "packaged:nli-mpnet"
# the model of the README's earlier MENLI, stress and scaling rows: scripts that regenerate them pin it
PUBLISHED_NLI = "packaged:nli-minilm"

# For text that is not English: MENLI switches to it when the NLI model is the default (``--lang``, README).
MULTILINGUAL_NLI = "packaged:nli-me5"

# What the packaged encoders read, for the languages an NLI adapter over them covers (None: about 100 languages).
BASE_LANGUAGES: dict[str, list[str] | None] = {
    "packaged:mpnet": ["en"],
    "packaged:minilm": ["en"],
    "packaged:me5-small": None,
    "packaged:embeddinggemma": None,
}
