"""Recall domains (D1) and the aggregator over them (D2): see domains/base.py."""
