"""Oracles that compare observations of eager, torch.compile and pythonify runs.

This package will hold one module per oracle family (outputs, mutation, aliasing, autograd,
grads, exceptions, seq_nr, cudagraph, guards), each turning three observations into a list of
findings with a stable signature. Eager is the ground truth; torch.compile is the reference for
pythonify. Lands with the oracles issue.
"""
