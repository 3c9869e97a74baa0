"""Numbers and flags in what users write are taken as they are: ``true`` is not 1 and ``"3"`` is not 3 (a loose
``"replicas": true`` once cut a topic to one replica)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Strict

StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]
