#!/usr/bin/env bash
# Re-runs every evaluate.py measurement of the MENLI results page (docs/results/menli.md) and keeps the JSON line each
# printed under bench/results/evaluate/; the page is then rendered from them (docs/gen/results_pages.py).
# Usage: bash docs/reproduce_menli.sh   (needs ../shared/data; about 15 minutes on 2 CPU cores)
#        WITH_MPNET=1 bash docs/reproduce_menli.sh   adds the rows of the opt-in packaged:nli-mpnet
#        WITH_ME5=1 bash docs/reproduce_menli.sh     adds the rows of packaged:nli-me5 (multilingual)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DATA=${NLGMETRICS_DATA:-../shared/data}
OUT=bench/results/evaluate
mkdir -p "$OUT"
run() {  # run NAME ARGS... : keep the last stdout line of evaluate.py as $OUT/NAME.json
  local name=$1; shift
  # --encoder: the published MENLI tables were measured with MiniLM (the default encoder is now me5-small)
  HF_HUB_OFFLINE=1 "$PY" evaluate.py "$@" --encoder packaged:minilm --quiet | tail -n 1 > "$OUT/$name.json.part"
  mv "$OUT/$name.json.part" "$OUT/$name.json"
  echo "$name: $(cat "$OUT/$name.json" | head -c 300)"
}
ADV="$DATA/adversarial/adv_menli_wmt20_de.jsonl"
# "--normalization set": the paper-style rows rescale over the scored set (the default, auto, would take packaged
# ranges where some were fitted with these models)
# the unsuffixed rows are nli-minilm's (the default NLI model is now nli-mpnet: its rows are WITH_MPNET's)
MI=(--nli-model packaged:nli-minilm)
for m in menli bertscore chrf bleu cosine; do run "adv_$m" adversarial --metric "$m" "${MI[@]}" --data "$ADV"; done
run adv_menli+bertscore adversarial --metric menli+bertscore --weight 0.2 --normalization set "${MI[@]}" --data "$ADV"
TED="$DATA/judgments/mt_mqm_wmt21_ted_zhen.jsonl"
for m in menli bertscore chrf bleu; do run "ted_zhen_$m" correlate --metric "$m" "${MI[@]}" --data "$TED"; done
run ted_zhen_menli+bertscore correlate --metric menli+bertscore --weight 0.2 --normalization set "${MI[@]}" --data "$TED"
# the combination bench/ablate_menli_combiner.py (removed after its run; in git history at commit 6764470) chose on
# the dev mix (chrF at w = 0.3) with the ranges it saved
# (~7 more minutes on 2 shared cores)
CD=(--metric menli+chrf --weight 0.3 --normalization bench/results/menli_combiner_sescore.stats.json)
run adv_menli+chrf-dev adversarial "${CD[@]}" "${MI[@]}" --data "$ADV"
run ted_zhen_menli+chrf-dev correlate "${CD[@]}" "${MI[@]}" --data "$TED"
run ted_zhen_menli+chrf-dev_vs_bertscore correlate "${CD[@]}" "${MI[@]}" --versus bertscore --data "$TED"
if [ "${WITH_MPNET:-0}" = 1 ]; then  # the default English NLI model (the five mpnet parts; ~25 more minutes)
  MP=(--nli-model packaged:nli-mpnet)
  run adv_menli-mpnet adversarial --metric menli "${MP[@]}" --data "$ADV"
  run adv_menli-mpnet+bertscore adversarial --metric menli+bertscore --weight 0.2 --normalization set "${MP[@]}" --data "$ADV"
  run ted_zhen_menli-mpnet correlate --metric menli "${MP[@]}" --data "$TED"
  run ted_zhen_menli-mpnet+bertscore correlate --metric menli+bertscore --weight 0.2 --normalization set "${MP[@]}" --data "$TED"
  # the robust combination: w = 0.4 and ranges fixed on the dev mix (bench/ablate_menli_bertscore_weight.py, removed after its run; in git at commit bdbcdb5)
  RB=(--weight 0.4 --normalization menli/nli-mpnet+bertscore-minilm.json)
  run adv_menli-mpnet+bertscore-robust adversarial --metric menli+bertscore "${RB[@]}" "${MP[@]}" --data "$ADV"
  run ted_zhen_menli-mpnet+bertscore-robust correlate --metric menli+bertscore "${RB[@]}" "${MP[@]}" --data "$TED"
  run ted_zhen_menli-mpnet+bertscore-robust_vs_bertscore correlate --metric menli+bertscore "${RB[@]}" "${MP[@]}" \
    --versus bertscore --data "$TED"
fi
if [ "${WITH_ME5:-0}" = 1 ]; then  # the multilingual NLI model, distilled from nli-mpnet (~15 more minutes)
  ME=(--nli-model packaged:nli-me5)
  run adv_menli-me5 adversarial --metric menli "${ME[@]}" --data "$ADV"
  run adv_menli-me5+bertscore adversarial --metric menli+bertscore --weight 0.2 --normalization set "${ME[@]}" --data "$ADV"
  run ted_zhen_menli-me5 correlate --metric menli "${ME[@]}" --data "$TED"
  run ted_zhen_menli-me5+bertscore correlate --metric menli+bertscore --weight 0.2 --normalization set "${ME[@]}" --data "$TED"
fi
"$PY" docs/gen/results_pages.py --write   # docs/results/*.md and the README's blocks from the new lines
