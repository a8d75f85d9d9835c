"""The simulated side: language world models that predict observations.

`engine.py` is the protocol; `llama_engine.py` runs a GGUF in-process,
`openai_engine.py` talks to any OpenAI-compatible server; `mcp_prompt.py` and
`parse.py` are the message format the models were trained on; `simulator.py`
ties them to a call and its session.
"""
