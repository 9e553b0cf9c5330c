def Parameter(data):  # noqa: N802 (torch's name)
    return data
