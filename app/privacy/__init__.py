"""Veil's pure privacy library.

Arrays and DataFrames in; arrays, DataFrames and plain result objects out. Nothing in this
package may import the web framework, the database layer or the job queue
(tests/privacy/test_purity.py proves it). Methods join the service by calling
``registry.register`` once at the bottom of their module; ``registry.load_all`` imports every
module of this package so that adding a method touches one module plus its tests.
"""
