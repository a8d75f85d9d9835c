"""world_model.chat_format: a registered format that drops the system message
(llama-cpp-python's `gemma`) gets it at the start of the first user turn instead,
so the simulation context and tool list still reach the model."""

from backends.world_model.chat_formats import registered_formatter

MESSAGES = [
    {"role": "system", "content": "You are the MCP server notes. ## Tools ..."},
    {"role": "user", "content": "### Turn 1\n**Action:** list_notes"},
    {"role": "assistant", "content": "No notes."},
    {"role": "user", "content": "### Turn 2\n**Action:** version"},
]


def test_a_format_without_a_system_role_keeps_the_system_message_in_the_first_user_turn():
    prompt = registered_formatter("gemma")(messages=MESSAGES).prompt
    assert prompt.startswith("<start_of_turn>user\nYou are the MCP server notes. ## Tools ...\n\n### Turn 1")
    assert prompt.count("<start_of_turn>user") == 2 and prompt.endswith("<start_of_turn>model\n")


def test_a_format_with_a_system_role_is_used_as_it_is():
    prompt = registered_formatter("chatml")(messages=MESSAGES).prompt
    assert prompt.startswith("<|im_start|>system\nYou are the MCP server notes.")


async def test_chat_format_in_the_config_is_the_format_the_built_model_runner_prompts_with(tmp_path):
    """Through the config and router/runtime/simulated_side.py's build_model_runner, on the bundled model: with
    `chat_format: chatml` the model runner formats with llama-cpp-python's chatml, not the
    file's own template (SmolLM2's adds a default system message when there is none)."""
    import json

    from kit.launch import model_path

    from router.config import load_config
    from router.runtime.simulated_side import build_model_runner

    messages = [{"role": "user", "content": "### Turn 1\n**Action:** version"}]
    prompts = {}
    for chat_format in ("chatml", None):
        config_file = tmp_path / f"{chat_format}.yaml"
        world_model = {"model_path": str(model_path()), "context_tokens": 512, "cached_sessions": 1}
        config_file.write_text(
            json.dumps({"world_model": {**world_model, **({"chat_format": chat_format} if chat_format else {})}})
        )
        model_runner = build_model_runner(load_config(config_file))
        try:
            await model_runner.start()
            prompts[chat_format] = model_runner._pool.contexts[0].formatter(messages=messages).prompt
        finally:
            await model_runner.aclose()
    assert prompts["chatml"] == registered_formatter("chatml")(messages=messages).prompt
    # Chatml's empty system turn.
    assert prompts["chatml"].startswith("<|im_start|>system\n<|im_end|>\n<|im_start|>user\n### Turn 1")
    assert prompts[None] != prompts["chatml"]  # the file's template: the format did change what the model reads
