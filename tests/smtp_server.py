"""An SMTP server on 127.0.0.1 for tests and benchmarks: it either accepts connections and never
answers (a hung mail server), or speaks enough SMTP to receive messages."""

import socket
import threading


class SmtpServer:
    """`answering=False`: every connection is accepted and left without a greeting until the
    server stops. `answering=True`: a minimal SMTP dialogue; each message's data is kept."""

    def __init__(self, *, answering: bool):
        self.answering = answering
        self.messages: list[str] = []
        self.connections = 0
        self._stopped = threading.Event()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()
        for sock in self._sockets:
            sock.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            self._sockets.append(sock)
            if self.answering:
                threading.Thread(target=self._converse, args=(sock,), daemon=True).start()

    def _converse(self, sock: socket.socket) -> None:
        reader = sock.makefile("rb")

        def reply(line: str) -> None:
            sock.sendall(line.encode() + b"\r\n")

        try:
            reply("220 test ESMTP")
            while line := reader.readline():
                command = line.decode(errors="replace").strip().upper()
                if command.startswith(("EHLO", "HELO")):
                    reply("250 test")
                elif command.startswith("DATA"):
                    reply("354 end with .")
                    data = []
                    while (chunk := reader.readline()) not in (b".\r\n", b""):
                        data.append(chunk.decode(errors="replace"))
                    self.messages.append("".join(data))
                    reply("250 queued")
                elif command.startswith("QUIT"):
                    reply("221 bye")
                    return
                else:  # MAIL, RCPT, RSET, NOOP
                    reply("250 ok")
        except OSError:
            return
        finally:
            sock.close()
