"""Every lab, in the order its tab, CLI verb and endpoint are listed. A new lab is its package and one line here."""

from explorer.labs.batching import SPEC as BATCHING
from explorer.labs.contract import LabSpec
from explorer.labs.ddp import SPEC as DDP
from explorer.labs.debug import SPEC as DEBUG
from explorer.labs.deploy import SPEC as DEPLOY
from explorer.labs.generate import SPEC as GENERATE
from explorer.labs.optimize import SPEC as OPTIMIZE
from explorer.labs.shapes import SPEC as SHAPES

LABS: dict[str, LabSpec] = {s.name: s for s in (BATCHING, DEPLOY, DEBUG, DDP, GENERATE, OPTIMIZE, SHAPES)}
