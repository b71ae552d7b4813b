#!/usr/bin/python3
"""kazoo_security: one kazoo client against a TLS or SASL ensemble of
libzkrecipes-testing, for tests/test_harness_security.c.  Run it with
Debian's /usr/bin/python3 (python3-kazoo; SASL needs python3-pure-sasl).

  kazoo_security.py CONNECT ACTION PATH [OPTIONS]

ACTION is one of
  create          create PATH (open ACL) and read it back
  create-private  create PATH with the ACL sasl:USER:cdrwa (USER the
                  --user) and read it back
  read            read PATH
  session         print "session 0xID" (its session id), then wait until
                  the session is lost (expired), at most --timeout-ms, and
                  print "lost", or "not lost"

Options:
  --ca FILE --cert FILE --key FILE
                  connect over TLS (use_ssl, verify_certs), trusting the CA
                  FILE; --cert and --key: the client certificate (without
                  them, none is shown)
  --user USER --password-file FILE | --password PASSWORD
                  authenticate with SASL DIGEST-MD5 as USER
  --timeout-ms MS how long to try to connect (default 15000)

It prints one line and exits 0:
  created PATH    the node was made and read back
  read DATA       the node's data
  noauth          the read was refused (NoAuthError: the ACL)
  authfailed MSG  SASL authentication failed (kazoo's AuthFailedError)
  refused MSG     no connection in time; MSG is kazoo's last complaint
                  (for TLS, the certificate error)
Anything else (bad usage, an unexpected error) exits 2 with a message on
stderr.  kazoo's log goes to stderr at level WARNING.

Licensed under the Apache License, Version 2.0 (see COPYING).
"""
import argparse
import logging
import sys

import threading

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import AuthFailedError, NoAuthError
from kazoo.security import make_acl


class LastComplaint(logging.Handler):
    """Keeps kazoo's last warning: why a connection failed."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.message = "no complaint"

    def emit(self, record):
        text = record.getMessage()
        if "Connection dropped" in text or "SSL" in text:
            self.message = text


def main():
    p = argparse.ArgumentParser()
    p.add_argument("connect")
    p.add_argument("action",
                   choices=["create", "create-private", "read", "session"])
    p.add_argument("path")
    p.add_argument("--ca")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--user")
    p.add_argument("--password-file")
    p.add_argument("--password")
    p.add_argument("--timeout-ms", type=int, default=15000)
    a = p.parse_args()

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    complaint = LastComplaint()
    logging.getLogger("kazoo").addHandler(complaint)

    kwargs = {"hosts": a.connect, "timeout": 10.0}
    if a.ca:
        kwargs.update(use_ssl=True, verify_certs=True, ca=a.ca,
                      certfile=a.cert, keyfile=a.key)
    if a.user:
        password = a.password
        if a.password_file:
            with open(a.password_file) as f:
                password = f.read()
        kwargs["sasl_options"] = {"mechanism": "DIGEST-MD5",
                                  "username": a.user, "password": password}
    client = KazooClient(**kwargs)
    try:
        try:
            client.start(timeout=a.timeout_ms / 1000.0)
        except Exception as e:  # kazoo's timeout: the complaint says why
            print("refused %s (%s)" % (complaint.message, type(e).__name__))
            return 0
        try:
            if a.action == "session":
                lost = threading.Event()
                client.add_listener(
                    lambda state: state == KazooState.LOST and lost.set())
                print("session 0x%x" % client.client_id[0], flush=True)
                ok = lost.wait(a.timeout_ms / 1000.0)
                print("lost" if ok else "not lost")
                return 0
            if a.action == "read":
                data, _ = client.get(a.path)
                print("read %s" % data.decode())
                return 0
            acl = None
            if a.action == "create-private":
                acl = [make_acl("sasl", a.user, all=True)]
            client.create(a.path, a.path.encode(), acl=acl, makepath=True)
            data, _ = client.get(a.path)
            if data.decode() != a.path:
                print("wrong data %r" % data, file=sys.stderr)
                return 2
            print("created %s" % a.path)
        except NoAuthError:
            print("noauth")
        except AuthFailedError as e:
            print("authfailed %s" % (str(e) or "AuthFailedError"))
        return 0
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    sys.exit(main())
