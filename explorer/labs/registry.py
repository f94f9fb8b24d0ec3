"""Every lab, in the order its tab, CLI verb and endpoint are listed. A new lab is its package and one line here."""

from explorer.labs.batching.spec import SPEC as BATCHING
from explorer.labs.contract import LabSpec
from explorer.labs.ddp.spec import SPEC as DDP
from explorer.labs.debug.spec import SPEC as DEBUG
from explorer.labs.deploy.spec import SPEC as DEPLOY
from explorer.labs.generate.spec import SPEC as GENERATE
from explorer.labs.optimize.spec import SPEC as OPTIMIZE

LABS: dict[str, LabSpec] = {s.name: s for s in (BATCHING, DEPLOY, DEBUG, DDP, GENERATE, OPTIMIZE)}
