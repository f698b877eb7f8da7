"""Print the API token of an account (created if it has none): scripts send it as
``Authorization: Token <key>``. Writes through the API need a staff account."""
from django.core.management.base import BaseCommand, CommandError

from common.api import api_token_issue


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--rotate", action="store_true",
                            help="replace the account's token (the old one stops working)")

    def handle(self, *args, username, rotate, **options):
        try:
            key = api_token_issue(username, rotate=rotate)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(key)
