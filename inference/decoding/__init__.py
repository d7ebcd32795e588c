"""The decoding loop over the engine: a run's request (``request``) and loop parameters (``loop_params``),
what it reports (``results``), the generation loop with its stop strings (``generation`` and its
rooms ``program``, ``sampling_program``, ``solo``; ``stopping``), beam search (``beam``), the
what-if inspection of one position (``whatif``) and a prompt's own log-probabilities (``scoring``)."""
