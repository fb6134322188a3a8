"""GCP refresh (optional extra): Cloud Billing catalog SKUs and Compute machine/accelerator types.

Needs google-cloud-billing and google-cloud-compute (`pip install 'gpusizer[gcp]'`).
TODO(gpusizer): map Compute Engine SKUs (GPU, core and RAM SKUs per region) to
machine prices; until then GCP keeps the embedded snapshot and says so.
"""

from __future__ import annotations


def refresh(regions, previous, now):
    try:
        from google.cloud import billing_v1, compute_v1  # noqa: F401
    except ImportError:
        return previous, {}, ["gcp: google-cloud-billing/google-cloud-compute not installed "
                              "(pip install 'gpusizer[gcp]'); kept the previous offers"]
    return previous, {}, ["gcp: live SKU mapping is not implemented yet; kept the previous offers"]
