"""Every scenario of the multi-process lab, by name, in the order the lab lists them."""

from explorer.labs.ddp import compiled, disagree, stragglers, uneven, unused
from explorer.labs.ddp.scenario import Scenario

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (unused.SCENARIO, stragglers.SCENARIO, disagree.SCENARIO,
                                                      uneven.SCENARIO, compiled.SCENARIO)}
