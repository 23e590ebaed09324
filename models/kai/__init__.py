"""The KAI Scheduler as the platform relies on it: its names, its GPU-sharing requests and its queues' quota rules.

kai-scheduler/KAI-Scheduler at the tag config/versions.py pins (v0.17.0); each module cites the files it encodes.
"""
