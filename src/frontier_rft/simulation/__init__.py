"""Simulated learners and the selector benchmark built on them (numpy only)."""

from frontier_rft.simulation.learner import SimulatedLearner
from frontier_rft.simulation.scenario import SCENARIOS, ScenarioConfig, get_scenario

__all__ = ["SCENARIOS", "ScenarioConfig", "SimulatedLearner", "get_scenario"]
