"""Bridges to other federated-learning frameworks, one module per direction.

Flower (``flwr``, the ``[scale]`` extra), imported only inside these modules' functions (but
in :mod:`~wirelessfl.bridges.flower_app`, which only Flower imports):

- :mod:`wirelessfl.bridges.flower_learner`: clients written against Flower's API (a Message API
  ``ClientApp``, ``client_fn(context)`` or ``client_fn(cid) -> NumPyClient``;
  :mod:`~wirelessfl.bridges.flower_clients`) trained through our channel, controller and
  virtual clock (``learner.kind: flower``);
- :mod:`wirelessfl.bridges.flower_serverapp` and :mod:`wirelessfl.bridges.flower_clientapp`:
  our simulator and federated algorithms as a Flower ``ServerApp``, with local training and
  the client's message built by a Flower ``ClientApp``;
- :mod:`wirelessfl.bridges.flower_app` and :mod:`wirelessfl.bridges.flower_run_config`: the two
  as a Flower App's components for ``flwr run``, the scenario and results folder read from the
  run config (``examples/flower_app/``);
- :mod:`wirelessfl.bridges.flower_records`: our messages as Flower records and back.

``docs/flower.md`` describes both directions.
"""
