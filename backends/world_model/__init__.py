"""The simulated side: language world models that predict observations.

`model_runner.py` is the protocol and its errors; `llama_runner.py` runs a GGUF
in-process (its per-session contexts in `llama_contexts.py`, serialised model
access in `model_access.py`, chat formats in `chat_formats.py`, grammars in
`llama_grammar.py`); `openai_runner.py` talks to any OpenAI-compatible server; `mcp_prompt.py` and
`parse.py` are the message format the models were trained on; `simulator.py`
ties them to a call and its session.
`llama_lora.py` keeps a LoRA adapter llama.cpp refuses from crashing the process.
"""
