"""Moonseed's Python side: actors that run Gymnasium-style envs written in Python and stream them
to a Moonseed learner (docs/own-envs-design.md). Needs Debian's python3 and python3-numpy only."""
