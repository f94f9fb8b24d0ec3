"""Every scenario of the multi-process lab, by name, in the order the lab lists them."""

from explorer.labs.ddp.compiled import SCENARIO as COMPILED
from explorer.labs.ddp.disagree import SCENARIO as DISAGREE
from explorer.labs.ddp.scenario import Scenario
from explorer.labs.ddp.stragglers import SCENARIO as STRAGGLERS
from explorer.labs.ddp.uneven import SCENARIO as UNEVEN
from explorer.labs.ddp.unused import SCENARIO as UNUSED

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (UNUSED, STRAGGLERS, DISAGREE, UNEVEN, COMPILED)}
