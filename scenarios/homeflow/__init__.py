"""HomeFlow (Gu et al. 2026, our implementation from its definitions): Blueprints over HomeMaker
homes, the three filters and verification on the twin, and its SmartHome-Bench-sized set."""
