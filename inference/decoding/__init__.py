"""The decoding loop over the engine: a run's request and loop parameters (``loop_params``), the
generation loop with its stop strings (``generation``, ``stopping``), beam search (``beam``), the
what-if inspection of one position (``whatif``) and a prompt's own log-probabilities (``scoring``)."""
