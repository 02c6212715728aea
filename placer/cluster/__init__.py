"""The hardware: device models and their datasheet figures, the cluster topology (servers, links), placement rules.

Imports only :mod:`placer.common`.
"""
