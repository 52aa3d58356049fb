"""Agents for the benchmark: reference solver, null agent, scripted plans, ReAct over an LLM."""
