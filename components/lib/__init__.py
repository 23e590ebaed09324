"""What the components share: declaring manifests and Helm releases, options for children, builders of
controller namespaces, placement and IAM documents. It imports `config/` only, never a component.
"""
