"""world_model.chat_format: a registered format that drops the system message
(llama-cpp-python's `gemma`) gets it at the start of the first user turn instead,
so the simulation context and tool list still reach the model."""

from backends.world_model.llama_engine import _registered_formatter

MESSAGES = [
    {"role": "system", "content": "You are the MCP server notes. ## Tools ..."},
    {"role": "user", "content": "### Turn 1\n**Action:** list_notes"},
    {"role": "assistant", "content": "No notes."},
    {"role": "user", "content": "### Turn 2\n**Action:** version"},
]


def test_a_format_without_a_system_role_keeps_the_system_message_in_the_first_user_turn():
    prompt = _registered_formatter("gemma")(messages=MESSAGES).prompt
    assert prompt.startswith("<start_of_turn>user\nYou are the MCP server notes. ## Tools ...\n\n### Turn 1")
    assert prompt.count("<start_of_turn>user") == 2 and prompt.endswith("<start_of_turn>model\n")


def test_a_format_with_a_system_role_is_used_as_it_is():
    prompt = _registered_formatter("chatml")(messages=MESSAGES).prompt
    assert prompt.startswith("<|im_start|>system\nYou are the MCP server notes.")
