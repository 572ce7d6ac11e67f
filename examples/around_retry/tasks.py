"""A celery task whose retry countdown (180 s by default) outlives the transport's visibility timeout (RTY502)."""

from celery import Celery

app = Celery("shop", broker="sqs://")
app.conf.broker_transport_options = {"visibility_timeout": 30}


@app.task(bind=True, max_retries=5)
def send_receipt(self, order_id):
    try:
        deliver(order_id)
    except ConnectionError as exc:
        raise self.retry(exc=exc)
