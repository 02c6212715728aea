"""The HTTP placement service: its settings, wire types, domain errors, state (occupancy, leases,
idempotent answers), reservation store and online refit; the app and middleware (the only modules
that know HTTP). It answers through a :class:`placer.api.Placer`.
"""
