from records.export.seen import SeenOnDisk


def test_a_key_is_new_once_and_the_scratch_file_goes_on_close(tmp_path):
    seen = SeenOnDisk(tmp_path / "seen.db").open()
    assert seen.add("a") and seen.add("b")
    assert not seen.add("a")
    assert all(seen.add(f"k{n}") for n in range(1000)) and not seen.add("k999")
    seen.close()
    assert not (tmp_path / "seen.db").exists()
