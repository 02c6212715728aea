"""Job graphs: the :class:`~placer.graphs.job_graph.JobGraph` type, importers (PipeDream profiles,
PyTorch modules through torch.fx), generated models (transformers, the model zoo, Gavel's models)
and the catalogue of shipped graphs.
"""
