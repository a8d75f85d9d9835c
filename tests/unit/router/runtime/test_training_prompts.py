from router.runtime.training_prompts import marked


def chat(pairs: int) -> list[dict]:
    messages = [{"role": "system", "content": "s"}]
    for n in range(pairs):
        messages += [{"role": "user", "content": f"u{n}"}, {"role": "assistant", "content": f"a{n}"}]
    return messages + [{"role": "user", "content": "final"}]


def test_history_and_demonstrations_are_marked_from_the_newest():
    out = marked(chat(4), ["sim", "real", "replay"], ["real"])
    assert [m.get("provenance") for m in out if m["role"] == "assistant"] == ["sim", "real", "replay", "real"]
    # Older history turns left out of the prompt: the newest ones are the ones shown.
    out = marked(chat(2), ["sim", "real", "replay"], [])
    assert [m.get("provenance") for m in out if m["role"] == "assistant"] == ["real", "replay"]
    assert "provenance" not in chat(1)[2]  # the input is not changed


def test_sources_are_marked_beside_the_provenances_from_the_newest():
    model = {"sub": "model", "model": "m.gguf"}
    out = marked(chat(4), ["sim", "real", "replay"], ["real"], sources=([model, None, None], [None]))
    assistants = [m for m in out if m["role"] == "assistant"]
    assert [m.get("source") for m in assistants] == [model, None, None, None]
    assert [m.get("provenance") for m in assistants] == ["sim", "real", "replay", "real"]
    # None given: none marked.
    assert all("source" not in m for m in marked(chat(4), ["sim", "real", "replay"], ["real"]))
