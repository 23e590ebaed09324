"""The KAI Scheduler (kai-scheduler/KAI-Scheduler at the tag config/versions.py pins): its queues and its GPU sharing."""
