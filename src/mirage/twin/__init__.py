"""The twin policy, one feature in one package: it decides by simulating the queue a user sees
forward in many drawn futures.

- :mod:`mirage.twin.policy`: the policy (``TwinPolicy``: what it draws and how it decides);
- :mod:`mirage.twin.world`: the drawn worlds (the queue view read off a simulation, a drawn
  future of it simulated with the successor submitted now);
- :mod:`mirage.twin.replay`: the twin replayed on a sample set (each episode re-run), on the
  trace or in worlds drawn from its own model;
- :mod:`mirage.twin.tune`: ``twin_tuned``'s settings chosen on the training samples;
- :mod:`mirage.twin.decide`: the workflow's step (rule decide_twin): fit, tune, replay, save;
- :mod:`mirage.twin.cli`: its command, ``mirage samples twin``;
- :mod:`mirage.twin.live`: the twin fitted for the live provisioner (``load_twin``).
"""
