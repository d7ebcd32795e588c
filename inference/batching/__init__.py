"""Continuous batching: the scheduler (``scheduler``) keeps the line and the runs, the planner
(``plan``) decides each step as plain data without a model, the runner (``runner``) executes a plan
against the decoder and its KV cache; ``params`` holds the batch's sizes."""
