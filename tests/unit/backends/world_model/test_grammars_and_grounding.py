"""The per-channel grammars compile in llama.cpp's GBNF parser, and the grounding
ranking puts the right recorded answers last."""

import pytest

from backends.world_model import grammars
from backends.world_model.grounding import generation_budget, ground, observation_text
from calls import Call, Observation, Provenance, Session, Turn


@pytest.fixture(scope="module")
def vocab():
    """The bundled model's vocabulary only (no weights): llama.cpp's grammar parser needs one."""
    from kit.launch import model_path
    from llama_cpp import Llama

    llama = Llama(str(model_path()), vocab_only=True, verbose=False)
    yield llama
    llama.close()


def compiles(llama, text):
    from backends.world_model.llama_grammar import check_grammar

    check_grammar(llama, text)  # raises on invalid GBNF
    return True


def test_invalid_gbnf_is_a_clear_error(vocab):
    from backends.world_model.model_runner import WorldModelError

    with pytest.raises(WorldModelError, match="not valid GBNF"):
        compiles(vocab, 'root ::= "unclosed')


@pytest.mark.parametrize(
    "grammar",
    [
        grammars.terminal_grammar(command='echo "a\\b" > x.txt', user="agent", host="sandbox", max_tokens=96),
        grammars.terminal_grammar(command="x" * 500, user="agent", host="sandbox", max_tokens=64),  # no room to echo
        grammars.http_grammar(max_tokens=128),
        grammars.http_grammar(max_tokens=128, json_body=True),
        grammars.http_grammar(
            max_tokens=128, body_schema=grammars.infer_json_schema([{"id": 1, "tags": ["a"]}, {"id": 2, "tags": []}])
        ),
        grammars.web_grammar(max_tokens=256, url='http://site.test/a?q="x"'),
        grammars.web_grammar(max_tokens=256),
        grammars.mcp_grammar(schema=None, max_tokens=64),
        grammars.mcp_grammar(schema=None, max_tokens=64, forbid_json=True, allow_fence=True),
        grammars.mcp_grammar(schema=None, max_tokens=64, json_text=True),
        grammars.mcp_grammar(schema=None, max_tokens=64, outcome_error=False, error_word=False),
        grammars.mcp_grammar(
            schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, max_tokens=64
        ),
    ],
)
def test_every_grammar_compiles(vocab, grammar):
    assert compiles(vocab, grammar)


def test_inferred_body_schemas_bound_strings_and_arrays():
    schema = grammars.infer_json_schema([{"name": "Ann", "tags": ["x", "y"]}, {"name": "Bob-Bob", "tags": []}])
    assert schema["properties"]["name"]["maxLength"] == 2 * 7 + 8
    assert schema["properties"]["tags"]["maxItems"] == 2 * 2 + 1
    assert grammars.infer_json_schema([]) is None


def row(arguments, text, *, session="old", tool="read", is_error=False, call_key=None, occurrence=None):
    return {
        "session": session,
        "tool": tool,
        "arguments": arguments,
        "call_key": call_key,
        "occurrence": occurrence,
        "observation": {"content": [{"type": "text", "text": text}], "is_error": is_error},
    }


def test_same_call_key_first_then_nearest_arguments_best_last():
    call = Call("mcp", "fs", "read", {"path": "/notes/today.txt"}, "s")
    rows = [
        row({"path": "/etc/hosts"}, "far"),
        row({"path": "/notes/today.txt"}, "same", call_key="K"),
        row({"path": "/notes/todo.txt"}, "near"),
        row({"path": "/x"}, "other tool", tool="write"),
    ]
    chosen = ground(rows, call, call_key="K", k=3).rows
    assert [observation_text(r) for r in chosen] == ["far", "near", "same"]
    keyed = ground(rows, call, call_key="K", k=3)
    assert keyed.unanimous  # one recorded answer to the key: nothing disagrees


def test_the_sessions_own_observation_of_the_same_resource_comes_before_examples():
    call = Call("mcp", "fs", "read", {"path": "/a"}, "s")
    own = [row({"path": "/a"}, "mine", session="s")]
    chosen = ground([row({"path": "/a"}, "theirs")], call, own=own, k=2).rows
    assert [observation_text(r) for r in chosen] == ["theirs", "mine"]  # best last


def test_a_stateful_call_is_grounded_in_the_answer_from_the_same_point_of_a_session():
    """The n-th `list` of this session is shown the n-th `list` of a recorded session
    last (the nearest state), above the session's own stale answer; recorded answers
    at that point agree, so it is sampled at temperature 0."""
    call = Call("mcp", "notes", "read", {}, "s")
    rows = [  # newest first, as the store returns them
        row({}, "2. ideas", call_key="L", occurrence=3),
        row({}, "1. groceries\n2. ideas", call_key="L", occurrence=2),
        row({}, "No notes.", call_key="L", occurrence=1),
    ]
    first = ground(rows, call, call_key="L", k=2)
    assert observation_text(first.rows[-1]) == "No notes." and first.unanimous
    # The same call at other points of a session shows other states: left out, as a
    # small model copies the first example it sees.
    assert [observation_text(r) for r in first.rows] == ["No notes."]
    own = [row({}, "No notes.", session="s", call_key="L")]
    second = ground(rows, call, call_key="L", own=own, k=2)
    assert [observation_text(r) for r in second.rows] == ["No notes.", "1. groceries\n2. ideas"]
    assert second.unanimous
    # No recorded 4th list: the answers disagree.
    assert not ground(rows, call, call_key="L", own=own * 3, k=2).unanimous


def test_disagreeing_answers_are_not_unanimous_and_the_budget_limits_examples():
    call = Call("mcp", "fs", "read", {"path": "/a"}, "s")
    rows = [row({"path": "/a"}, "one"), row({"path": "/a"}, "two"), row({"path": "/b"}, "x" * 400)]
    grounding = ground(rows, call, k=3, budget_tokens=10, count_tokens=len)
    assert not grounding.unanimous
    assert [observation_text(r) for r in grounding.rows] == ["two", "one"]  # the long one is over budget
    assert grounding.answer_tokens == 400


def test_generation_budget_follows_real_answer_sizes_under_the_ceiling():
    assert generation_budget(None, 256) == 256
    assert generation_budget(10, 256) == 48
    assert generation_budget(100, 256) == 166
    assert generation_budget(1000, 256) == 256


def test_session_rows_come_from_the_history_of_the_same_server():
    from backends.world_model.grounding import session_rows

    session = Session(
        "s",
        history=[
            Turn(
                Call("mcp", "fs", "read", {"path": "/a"}, "s"),
                Observation([{"type": "text", "text": "A"}], Provenance.REAL),
            ),
            Turn(
                Call("mcp", "other", "read", {"path": "/a"}, "s"),
                Observation([{"type": "text", "text": "B"}], Provenance.REAL),
            ),
        ],
    )
    assert [observation_text(r) for r in session_rows(Call("mcp", "fs", "read", {}, "s"), session)] == ["A"]


def test_a_schema_stored_with_sorted_keys_is_generated_in_the_recorded_field_order():
    schema = {
        "type": "object",
        "required": ["timezone", "datetime"],
        "properties": {
            "datetime": {"type": "string"},
            "is_dst": {"type": "boolean"},
            "source": {"type": "object", "properties": {"b": {}, "a": {}}},
            "timezone": {"type": "string"},
        },
    }
    recorded = [{"timezone": "UTC", "datetime": "x", "source": {"a": 1, "b": 2}}]
    ordered = grammars.ordered_like(schema, recorded)
    assert list(ordered["properties"]) == ["timezone", "datetime", "source", "is_dst"]
    assert list(ordered["properties"]["source"]["properties"]) == ["a", "b"]
    # Required order first.
    assert list(grammars.ordered_like(schema, [])["properties"]) == [
        "timezone",
        "datetime",
        "is_dst",
        "source",
    ]
    root = next(line for line in grammars._schema_rules(ordered).splitlines() if line.startswith("json-root ::="))
    assert root.index("timezone-kv") < root.index("datetime-kv")  # the grammar writes them in that order


def test_a_success_whose_recordings_never_start_with_error_cannot_either():
    """A small model primed by an earlier error answer writes "Error in …" as a
    success's text; when no recorded success of the tool starts with "Error", the
    grammar leaves that out (the error form stays for a call that may fail)."""
    from backends.world_model.mcp_domain import McpDomain

    domain = McpDomain(
        tools_for=lambda server: [], output_schema_for=lambda server, tool: None, records_for=lambda call: rows
    )
    call = Call("mcp", "notes", "read", {"id": 1}, "s")
    rows = [row({"id": 1}, "Deleted note 1")]
    strict = domain.constraint(call, Session("s"), ground(rows, call), max_tokens=64).grammar
    rows = [row({"id": 1}, "Deleted note 1"), row({"id": 2}, "Error log: 3 lines")]
    loose = domain.constraint(call, Session("s"), ground(rows, call), max_tokens=64).grammar
    assert '"Error" [^:]' not in strict and '"Error" [^:]' in loose


def grammar_allows(llama, grammar: str, text: str) -> bool:
    """Whether llama.cpp's own grammar sampler lets the model write `text`, token by
    token as the bundled model's tokenizer splits it: each token is offered alone to the
    sampler (a rejected one gets logit -inf) and, when allowed, accepted into its state."""
    import ctypes
    import math

    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(llama._model.vocab, grammar.encode(), b"root")
    assert sampler, "the grammar does not compile"
    try:
        for token in llama.tokenize(text.encode(), add_bos=False, special=False):
            data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
            candidates = llama_cpp.llama_token_data_array(data=data, size=1, selected=-1, sorted=False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
            if math.isinf(data[0].logit):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)


FENCED = '```json\n{"a": 1}\n```'


def test_the_mcp_text_grammar_refuses_a_fence_around_the_answer_unless_allowed(vocab):
    plain = grammars.mcp_grammar(schema=None, max_tokens=64)
    assert grammar_allows(vocab, plain, "The time is 10:00 UTC.")  # the check itself lets a good answer through
    assert not grammar_allows(vocab, plain, FENCED)
    assert not grammar_allows(vocab, plain, "`x`")  # a single backtick opening is refused too
    fenced = grammars.mcp_grammar(schema=None, max_tokens=64, allow_fence=True)
    assert grammar_allows(vocab, fenced, FENCED)
    assert grammar_allows(vocab, fenced, "The time is 10:00 UTC.")


def test_the_mcp_domain_allows_a_fence_only_when_the_recordings_have_one(vocab):
    """The domain sets allow_fence from the tool's recorded answers: an answer
    fenced like prompt scaffolding is refused unless the real tool writes fences."""
    from backends.world_model.mcp_domain import McpDomain

    call = Call("mcp", "srv", "t", {"x": 1}, "s")

    def grammar_with(recorded: str) -> str:
        rows = [
            {
                "session": "old",
                "channel": "mcp",
                "server": "srv",
                "tool": "t",
                "arguments": {"x": 1},
                "observation": {"content": [{"type": "text", "text": recorded}], "is_error": False, "structured": None},
            }
        ]
        domain = McpDomain(
            tools_for=lambda server: [{"name": "t"}], records_for=lambda c: rows, output_schema_for=lambda s, t: None
        )
        grounding = domain.ground(call, Session("s"), count_tokens=lambda text: len(text) // 4)
        return domain.constraint(call, Session("s"), grounding, max_tokens=64).grammar

    assert not grammar_allows(vocab, grammar_with("plain text answer"), FENCED)
    assert grammar_allows(vocab, grammar_with("plain text answer"), "another plain answer")
    assert grammar_allows(vocab, grammar_with("```\nfenced by the real tool\n```"), FENCED)


def test_arrays_are_held_to_twice_the_longest_recorded_so_a_repeating_model_closes_them():
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}}
    bounded = grammars.ordered_like(schema, [{"items": ["a", "b"]}, {"items": ["c"]}])
    assert bounded["properties"]["items"]["maxItems"] == 5
    assert "maxItems" not in grammars.ordered_like(schema, [])["properties"]["items"]  # nothing recorded: no bound
    own = {"type": "object", "properties": {"items": {"type": "array", "maxItems": 3}}}
    # The schema's own wins.
    assert grammars.ordered_like(own, [{"items": list(range(9))}])["properties"]["items"]["maxItems"] == 3
