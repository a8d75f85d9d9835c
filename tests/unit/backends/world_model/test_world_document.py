"""World documents: read from a file, rendered for the prompt, and an episode's
extending (or replacing) the configured one."""

import pytest

from backends.world_model.world_document import WorldDocument, world_document_of
from router.config.root import ConfigError, parse_config


def test_the_config_reads_the_world_file_beside_it_and_keeps_yaml_dates_and_numbers_as_text(tmp_path):
    (tmp_path / "world.md").write_text("Lumen Freight ships lamps.\n")
    config = parse_config(
        "world_model:\n  world:\n    file: world.md\n    date: 2031-04-02\n    facts: {ceo: Ada Park, staff: "
        "12}\n    text: HQ in Lima.\n",
        base_dir=tmp_path,
    )
    world = config.world_model.world
    assert world is not None and world.file is None
    assert (
        world.render()
        == "Current date: 2031-04-02\n- ceo: Ada Park\n- staff: 12\nLumen Freight ships lamps.\n\nHQ in Lima."
    )


def test_a_missing_world_file_is_a_config_error_naming_its_line(tmp_path):
    with pytest.raises(ConfigError, match=r"<config>:3: world_model.world.file: world file .*nope.md.* cannot be read"):
        parse_config("world_model:\n  world:\n    file: nope.md\n", base_dir=tmp_path)


def test_an_episode_world_extends_the_configured_one_or_replaces_it():
    configured = WorldDocument(date="2031-04-02", facts={"ceo": "Ada Park", "city": "Lima"}, text="Lumen Freight.")
    episode = WorldDocument(date="2031-05-01", facts={"city": "Quito", "order 7": "shipped"}, text="A storm is coming.")
    merged = configured.merged(episode)
    assert merged.render() == (
        "Current date: 2031-05-01\n- ceo: Ada Park\n- city: Quito\n- "
        "order 7: shipped\nLumen Freight.\n\nA storm is coming."
    )
    assert configured.merged(WorldDocument(text="Only this.", replace=True)).render() == "Only this."
    assert world_document_of("plain text") == WorldDocument(text="plain text") and world_document_of(None) is None
