import requests
from requests.adapters import HTTPAdapter
from urllib3.util import Retry


def session() -> requests.Session:
    s = requests.Session()
    retries = Retry(
        total=5,
        status_forcelist=[502, 503, 504],
    )
    s.mount("https://", HTTPAdapter(max_retries=retries))
    return s
