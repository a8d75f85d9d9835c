"""HTTP messages as simroute sees them: a request as a `Call`, a response as an
`Observation` (`messages.py`), and decoding of bodies (`decode.py`)."""
