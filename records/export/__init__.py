"""Exporting records as world-model training data (`simroute export`).

- `options.py`: which records become examples (the filters) and the seeded split by session;
- `examples.py`: a session's records, in step order, to training examples: only real
  observations are targets; the prompt comes from a builder handed in (the live
  world-model prompt code, which lives in backends/ and is assembled in router/);
- `formats.py`: an example as a line of each format (agentworldbench, messages, preference);
- `seen.py`: what was already written, kept on disk (duplicates collapse, memory stays flat);
- `lines.py`: where the lines go, in session order or hardest first (sorted in a scratch file);
- `run.py`: the streaming driver over any record store, and the dataset card's counts.
"""
