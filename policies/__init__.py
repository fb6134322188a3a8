"""gpusizer's Pulumi policy pack: rules (plain functions), pack (SDK adapters), offline preview."""
