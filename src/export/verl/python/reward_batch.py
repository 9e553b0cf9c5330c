def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
    """The batch form (veRL's batch reward manager, the TRL script): compute_score per response."""
    return [compute_score(d, s, g, e) for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extra_infos)]
