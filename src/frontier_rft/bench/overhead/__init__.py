"""Selection overhead: every selector's step time and memory held to the floor its class
declares. `runner` runs it, `world` is its learner-free world, `report` its table."""
