"""Answering placement queries: the Python API (``placer.place``, ``placer.predict``), the
reservation store and the HTTP service.
"""
