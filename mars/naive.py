"""The paper's naive baseline: fill the same blanks with a masked LM, one token per masked sub-word.

A masked LM can only fill a fixed number of slots, so every augmented reference keeps the human reference's
length; the paper uses this (with RoBERTa-large) to show what variable-length self-planning adds. Slots are
filled in one parallel pass by arg-max (deterministic), with the context as the first segment when given.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from mars.cloze import ClozeJob
from mars.template import Blank, TextBlock
from nlgmetrics.modelroles.batching import length_sorted_batches


class MaskedLMFiller:
    def __init__(self, mlm: Any, batch_size: int = 16, max_length: int = 512) -> None:
        self.mlm = mlm
        self.batch_size = batch_size
        self.max_length = max_length
        if mlm.tokenizer.mask_token is None:
            raise ValueError(f"masked_lm '{mlm.spec}' has no mask token")

    def _masked_text(self, job: ClozeJob) -> tuple[str, list[int]]:
        tok = self.mlm.tokenizer
        parts, counts = [], []
        for block in job.template.blocks:
            if isinstance(block, TextBlock):
                parts.append(block.lead + block.text)
            else:
                assert isinstance(block, Blank)
                n = max(1, len(tok(block.lead + block.original, add_special_tokens=False)["input_ids"]))
                counts.append(n)
                parts.append(block.lead + tok.mask_token * n)
        return "".join(parts).strip(), counts

    def fill(self, jobs: Sequence[ClozeJob]) -> list[str]:
        """The filled template of every job (jobs without blanks return the reference)."""
        tok, model = self.mlm.tokenizer, self.mlm.model
        device = next(model.parameters()).device
        prepared = [self._masked_text(job) for job in jobs]
        results: list[str] = [job.template.original() for job in jobs]
        todo = [i for i, job in enumerate(jobs) if job.template.blanks]
        special = torch.tensor(sorted(set(tok.all_special_ids)), dtype=torch.long)
        lengths = [len(prepared[i][0]) + len(jobs[i].context) for i in todo]
        for batch in length_sorted_batches(lengths, self.batch_size):
            index = [todo[b] for b in batch]
            texts = [prepared[i][0] for i in index]
            contexts = [jobs[i].context.strip() for i in index]
            if any(contexts):
                inputs = tok(
                    contexts,
                    texts,
                    truncation="only_first",
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                )
            else:
                inputs = tok(texts, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
            with torch.no_grad():
                logits = model(**inputs.to(device)).logits.float().cpu()
            logits[..., special] = float("-inf")
            ids = inputs["input_ids"].cpu()
            for row, i in enumerate(index):
                positions = (ids[row] == tok.mask_token_id).nonzero().flatten()
                counts = prepared[i][1]
                if len(positions) != sum(counts):
                    raise ValueError(
                        f"reference too long for the masked LM ({self.max_length} tokens): "
                        f"{jobs[i].template.original()[:80]!r}"
                    )
                predicted = logits[row, positions].argmax(dim=-1).tolist()
                fills, start = [], 0
                for blank, n in zip(jobs[i].template.blanks, counts):
                    text = tok.decode(
                        predicted[start : start + n], skip_special_tokens=True, clean_up_tokenization_spaces=False
                    ).strip()
                    fills.append(blank.lead + text)
                    start += n
                results[i] = jobs[i].template.render(fills)
        return results
