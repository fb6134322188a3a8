"""Facts about hardware and models: GPUs (data/gpus.yaml), the model registry (data/models.yaml),
Hugging Face configs and ids, and machine images (data/images.yaml). Each figure has its source."""
