"""A pytest plugin for tests/thrift/happybase_suite.sh: happybase
connections default to the protocol named in HAPPYBASE_PROTOCOL (happybase's
suite reads the transport from the environment, not the protocol)."""
import os

import happybase

_init = happybase.Connection.__init__


def _with_protocol(self, *args, **kwargs):
    kwargs.setdefault("protocol", os.environ.get("HAPPYBASE_PROTOCOL", "binary"))
    _init(self, *args, **kwargs)


happybase.Connection.__init__ = _with_protocol
