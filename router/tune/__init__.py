"""`simroute tune`: from recorded traffic to a candidate world model (a LoRA adapter of
the configured GGUF model, or a merged model), and its model card.

- `settings.py`: a run's settings (the data's filters, the hyper-parameters, the output);
- `extra.py`: the optional training stack (`simroute[tune]`): whether it is importable,
  and how to install it;
- `data.py`: the training data, exported with the live prompts (`train.jsonl`,
  `test.jsonl`, split by session), or taken from a `simroute export` folder;
- `card.py`: the model card (`card.json`, `MODEL_CARD.md`): data, hyper-parameters, the
  base model's hash, the evaluation's figures (empty until evaluated);
- `prepare.py`: llama.cpp's conversion scripts and `gguf-py`, extracted once from the
  locked llama-cpp-python source package into the cache (`simroute tune --prepare`);
- `examples.py`: a training line as token ids and labels, the loss on the target (pure);
- `base_model.py`: the base model read from the GGUF file, saved as a Hugging Face folder;
- `train.py`: the LoRA training loop, its checkpoints and `--resume`;
- `convert.py`: the candidate back to GGUF with the prepared scripts, checked in llama-cpp-python;
- `evaluate.py`, `figures.py`: base vs candidate on the held-out sessions (compare-models'
  machinery), and the card's figures from its calls;
- `run.py`: the steps after the data, each recorded in the card as it ends.

May import `router.config`, `router.runtime` (the live prompts) and `shadow` (the
export); the training stack only where it trains, never at import.
"""
