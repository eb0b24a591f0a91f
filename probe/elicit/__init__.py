"""Confidence extraction per source (pure): token, ptrue, verbal, consistency."""
