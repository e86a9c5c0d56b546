"""The durable pipeline of this product: milestones and the step table, the PostgreSQL
queue, the workers of one process, the one-shot run, and the operator's record actions."""
