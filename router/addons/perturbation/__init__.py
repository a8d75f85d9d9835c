"""Seeded perturbations on every channel and route: the addon (addon.py), the
answers it makes in each channel's shape (fault_shapes.py) and paginated listings
(pages.py). The plans and their pure decisions live in policies/perturbation."""
