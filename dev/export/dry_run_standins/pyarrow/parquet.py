"""Stand-in of pyarrow.parquet.read_table (see README.md): rows hyparquet decoded beside the file."""
import json


class _Table:
    def __init__(self, rows):
        self.rows = rows

    def to_pylist(self):
        return self.rows


def read_table(path):
    return _Table(json.load(open(path + ".rows.json")))
